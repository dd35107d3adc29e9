"""Markdown rendering of model text: the plain-line shortcut gives exactly the full path's HTML."""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from webapp.core.rendering import _PLAIN_LINE, render_markdown, render_markdown_in_full

# Pieces of model text, Markdown's, math's and HTML's included, joined with or without spaces,
# so that lines just outside the shortcut's pattern (and inside it) are drawn.
PIECES = [
    "word", "The", "word", "is", "42", "1.", "2)", "*", "_", "`", "-", "+", "#", ">", "<b>",
    "&", "&amp;", "$", "\\(", "\\", "[x](y)", "!", "|", "~", "'", '"', "%", "=", "/", ":",
    "\n", "\t", "  ",
]  # fmt: skip
LINES = st.lists(st.tuples(st.sampled_from(PIECES), st.sampled_from(["", " "])), max_size=8).map(
    lambda parts: "".join(piece + gap for piece, gap in parts)
)


@settings(max_examples=500)
@given(st.from_regex(_PLAIN_LINE, fullmatch=True))
@example("The answer is 42.")
@example('It\'s "quoted", 5% = 3/4; fine: yes? no')
@example("Check -- 1. 2. again")
def test_a_plain_line_renders_as_the_full_path_renders_it(text: str) -> None:
    assert render_markdown(text) == render_markdown_in_full(text)


@settings(max_examples=1000)  # a few ms each
@given(LINES)
@example("1986. A good year")
@example("- a list")
@example("a <b>bold</b> & more")
@example("trailing  ")
@example("x $a^2$ y")
@example("word*word*word")  # one example of each inline construct: what random draws can miss
@example("word_word_ word __b__")
@example("a `b` c")
@example("see [x](y) or ![i](j)")
@example("a &amp; b")
@example("a \\* b")
@example("a | b\n- | -")
def test_text_near_the_shortcut_renders_as_the_full_path_renders_it(text: str) -> None:
    assert render_markdown(text) == render_markdown_in_full(text)


def test_the_shortcut_takes_plain_lines_and_nothing_else() -> None:
    assert _PLAIN_LINE.fullmatch("The answer is 42.")
    for text in ("1. first", "- item", "a *b*", "a <b>", "x $y$", "two\nlines", "end ", ""):
        assert not _PLAIN_LINE.fullmatch(text), text
