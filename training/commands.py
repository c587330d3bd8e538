"""The training registries' subcommand of the ``armlab`` command line: ``armlab arms``."""


def arms(subparsers):
    """``armlab arms``: every registered advantage estimator, data policy and policy loss, with its parameters."""
    parser = subparsers.add_parser(
        "arms",
        help="list the estimators, data policies and policy losses a config may name",
        description="List every registered estimator, data policy and policy loss with its "
        "one-line description and parameters (defaults).",
    )

    def run(args):
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
        return 0

    parser.set_defaults(run=run)


SUBCOMMANDS = [arms]
