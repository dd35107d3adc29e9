"""The demo project (``manage.py demo_project``): built from every app's services, so it sits
above them all."""
