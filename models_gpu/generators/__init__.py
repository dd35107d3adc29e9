"""Procedural task generators: seeded, tiny, and mirrored by the web side's demo command."""
