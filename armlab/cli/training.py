"""The training registries' subcommand of the ``armlab`` command line: ``armlab arms`` (what it lists is
:mod:`armlab.training`'s registries and :mod:`armlab.spec`'s recipe keys, imported when it runs)."""

import textwrap


def arms(subparsers):
    """``armlab arms``: every registered advantage estimator, data policy and policy loss, with its parameters, and
    every recipe key with its default and meaning (from armlab.spec)."""
    parser = subparsers.add_parser(
        "arms",
        help="list the estimators, data policies and policy losses a config may name, and the recipe's keys",
        description="List every registered estimator, data policy and policy loss with its "
        "one-line description and parameters (defaults), then every recipe key with its default and meaning.",
    )

    def run(args):
        from armlab.schema import recipe_keys
        from armlab.training.data_policies import list_policies
        from armlab.training.estimators import list_estimators
        from armlab.training.losses import list_policy_losses

        for title, listing in (
            ("estimators", list_estimators()),
            ("data policies", list_policies()),
            ("policy losses", list_policy_losses()),
        ):
            print(f"{title} ({len(listing)}):")
            for entry in listing:
                params = ", ".join(f"{k}={v!r}" for k, v in entry["params"].items()) or "no parameters"
                print(f"  {entry['name']:22s} {entry['description']}\n  {'':22s} parameters: {params}")
        keys = recipe_keys()
        print(f"recipe keys ({len(keys)}; an arm may override any):")
        for key in keys:
            default = "none" if key["default"] is None else repr(key["default"])
            meaning = textwrap.fill(key["description"], 96, initial_indent=" " * 25, subsequent_indent=" " * 25)
            print(f"  {key['name']:22s} default {default}\n{meaning}")
        return 0

    parser.set_defaults(run=run)


SUBCOMMANDS = [arms]
