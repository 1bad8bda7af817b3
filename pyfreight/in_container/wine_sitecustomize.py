"""Put on PYTHONPATH as sitecustomize.py (beside regrtest_wine.py) when a distribution's
run_tests entry runs under Wine (`pyfreight test-dist`): that entry starts
`python -m test` itself, so every Python process of the run gets regrtest_wine's
adaptations at start-up instead. The distribution is not changed."""

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the same file, as the package names it
    from pyfreight.in_container import regrtest_wine
else:  # run from the folder regrtest_wine.py is copied to
    import regrtest_wine

regrtest_wine.adapt_to_wine()
