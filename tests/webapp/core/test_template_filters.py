"""The figures' template filters (webapp.core.templatetags.dialab)."""

from __future__ import annotations

import pytest

from webapp.core.templatetags.dialab import percent, share


@pytest.mark.parametrize(
    ("rate", "digits", "shown"),
    [
        (None, 0, "—"),
        (0, 0, "0%"),
        (1, 0, "100%"),
        (0.5, 0, "50%"),
        (1 / 308, 0, "<1%"),  # 1 of 308 is not none
        (307 / 308, 0, ">99%"),  # nor is 307 of 308 all
        (1 / 3000, 1, "<0.1%"),
        (2999 / 3000, 1, ">99.9%"),
        (0.013, 0, "1%"),
    ],
)
def test_a_share_reads_0_or_100_percent_only_when_it_is(
    rate: float | None, digits: int, shown: str
) -> None:
    assert share(rate, digits) == shown


def test_a_rate_rounds_as_it_is() -> None:
    assert percent(0.4213) == "42.1%" and percent(0.99996) == "100.0%"
