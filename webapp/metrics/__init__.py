"""Every figure Dialab shows, computed once: pure functions over typed rows, no Django.

- ``stats``: intervals and tests (Wilson, Newcombe, Student t, bootstrap, sign-flip);
- ``agreement``: agreement between annotators (kappa, alpha, MASI);
- ``partial``: what a run's figures count while it plays or after it stopped early;
- ``figures``: a run's figures (accuracy after turn k, pass@k, rates, breakdowns, spending);
- ``comparison``: one model against another, paired over shared tasks where they share any;
- ``export``: a run's figures as CSV rows.

Pages, charts, exports, workers, management commands and benchmarks all read these; the
selectors that count rows in the database hand their counts here. The documentation's "Run
metrics" page (docs/reference/metrics.md) defines each figure with its denominator and interval.
"""
