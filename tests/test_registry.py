"""One registry idiom (armlab/registry.py) behind every extension point, and its one error for an unknown name."""

import pytest

from armlab.analysis.stats.intervals import CROSSED_METHODS, SEED_METHODS
from armlab.analysis.stats.sequential import SPENDING
from armlab.analysis.stats.statistics import STATISTICS
from armlab.configfile import ConfigError
from armlab.evals.run import MODELS
from armlab.registry import Registry
from armlab.training.backends import BACKENDS
from armlab.training.data_policies import DATA_POLICIES
from armlab.training.estimators import ESTIMATORS
from armlab.training.losses import POLICY_LOSSES
from armlab.training.tasks import TASKS

REGISTRIES = {
    "estimator": ESTIMATORS,
    "data policy": DATA_POLICIES,
    "policy loss": POLICY_LOSSES,
    "task family": TASKS,
    "backend": BACKENDS,
    "lm-eval model": MODELS,
    "statistic": STATISTICS,
    "interval method": SEED_METHODS,
    "spending rule": SPENDING,
}


@pytest.mark.parametrize("kind", REGISTRIES)
def test_every_extension_point_is_a_registry_that_says_what_it_holds(kind):
    assert isinstance(REGISTRIES[kind], Registry) and REGISTRIES[kind].kind == kind
    assert isinstance(CROSSED_METHODS, Registry)


def test_a_known_name_is_its_entry_and_an_unknown_one_names_the_setting_the_near_misses_and_all():
    registry = Registry("estimator", {"grpo": 1, "dr_grpo": 2, "rloo": 3})
    assert registry.entry("rloo", "recipe.estimator") == 3 and list(registry) == ["grpo", "dr_grpo", "rloo"]
    with pytest.raises(ConfigError) as err:
        registry.entry("dr-grpo", "c.yaml: arms.x.estimator", ConfigError)
    assert str(err.value) == (
        "c.yaml: arms.x.estimator: unknown estimator 'dr-grpo'; did you mean 'dr_grpo' or 'grpo'?; "
        "expected one of ['dr_grpo', 'grpo', 'rloo']"
    )
    # nothing close: no guess; not a string (a list, a mapping): named as given, never a TypeError
    assert registry.unknown("ppo", "k") == "k: unknown estimator 'ppo'; expected one of ['dr_grpo', 'grpo', 'rloo']"
    for odd in (["grpo"], {"name": "grpo"}, None):
        with pytest.raises(ValueError) as err:
            registry.entry(odd, "k")
        assert str(err.value) == f"k: unknown estimator {odd!r}; expected one of ['dr_grpo', 'grpo', 'rloo']"
