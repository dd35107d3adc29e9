"""What the web side and the model side must agree on, defined once (standard library only).

``webapp`` may import this package and nothing else of ``models_gpu`` (an import-linter
contract), and this package imports nothing but the standard library, so the web process can
build forms from it and validate through it without loading model code.
"""
