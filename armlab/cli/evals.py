"""The evaluation stage's subcommands of the ``armlab`` command line: ``armlab probe`` and ``armlab benchmarks``
(the work is :mod:`armlab.experiment.probe`'s and :mod:`armlab.evals.catalogue`'s, imported when it runs)."""


def probe(subparsers):
    """``armlab probe CONFIG``: time a few training steps of every arm and one evaluation, for the plan's wall time."""
    parser = subparsers.add_parser(
        "probe",
        help="time a few training steps of every arm and one evaluation: the wall time armlab plan prints",
        description="Build the experiment's data and base policy in a scratch folder, time --steps training "
        "steps of every arm and one evaluation, and write the times to results/<experiment>/probe.json, which "
        "armlab plan and every workflow start read when no earlier runs have manifests (armlab/experiment/probe.py).",
    )
    parser.add_argument("config", help="experiment config, YAML or JSON")
    parser.add_argument("--steps", type=int, default=10, help="training steps timed per arm (default 10)")
    parser.add_argument("--out", help="where to write the times (default results/<experiment>/probe.json)")

    def run(args):
        from pathlib import Path

        from armlab.configfile import ConfigError, check_limit, limits_of
        from armlab.contract import PROBE
        from armlab.experiment.probe import probe as measure
        from armlab.experiment.validate import load_config
        from armlab.files import check_output_file, write_json

        if args.steps < 1:
            raise ConfigError(f"--steps: expected a positive whole number, got {args.steps}")
        config = load_config([Path(args.config)])
        limits = limits_of(args.config, config)
        check_limit(args.config, "--steps", args.steps, limits, "steps")  # as recipe.steps is
        out = Path(args.out or Path("results") / config["experiment"] / PROBE)
        check_output_file(out)  # before the timing, not after
        times = measure(config, args.steps)
        write_json(out, {"config": args.config, **times})
        per_step = ", ".join(f"{arm} {t['seconds_per_step']:.2f}" for arm, t in times["arms"].items())
        print(
            f"armlab probe: wrote {out}: seconds per training step {per_step}; one evaluation "
            f"{times['eval_seconds']:.1f} s; data and base policy {times['setup_seconds']:.0f} s"
        )
        return 0

    parser.set_defaults(run=run)


def benchmarks(subparsers):
    """``armlab benchmarks [FORMAT [--path FILE]]``: the catalogue of published benchmarks read from local files
    (evals/catalogue.py), or the eval section that evaluates one as papers do, its local file checked as the
    workflow's start checks it."""
    parser = subparsers.add_parser(
        "benchmarks",
        help="the catalogue of published benchmarks armlab reads from local files, and a config snippet for one",
        description="List the formats of eval.external (source: file): where each dataset is published, the "
        "fields read, the verifier and the sampling papers report; with FORMAT, print an eval section that "
        "evaluates it as papers do, and the prompt the model reads.",
    )
    parser.add_argument("format", nargs="?", help="a format of the catalogue: print its config snippet")
    parser.add_argument(
        "--path",
        help="your local copy of the dataset: read and checked as the workflow's start checks it (the file, its "
        "schema, every reference answer), and named in the snippet",
    )

    def run(args):
        import yaml

        from armlab.configfile import ConfigError
        from armlab.evals.catalogue import FORMATS, external_items

        if args.format is None:
            for name, fmt in FORMATS.items():
                settings = ", ".join(f"{k} {v}" for k, v in fmt.settings.items())
                print(f"{name}: {fmt.published}")
                print(f"    fields {fmt.fields}; verifier {fmt.verifier}; papers: {settings}")
            return 0
        fmt = FORMATS.entry(args.format, "format", ConfigError)
        settings = dict(fmt.settings)
        samples = int(settings.pop("samples"))
        spec = {
            "source": "file",
            "format": args.format,
            "path": args.path or "PATH/TO/LOCAL/FILE",
            "domain": fmt.domain,
            "samples": samples,
        }
        section = {
            "eval": {
                "samples": samples,
                **settings,
                "pass_k": sorted({1, samples}),
                "maj_k": [samples],
                # its own samples: another benchmark's snippet beside it keeps its k
                "external": {args.format: spec},
            }
        }
        if args.path is None:
            # the template with its fields marked and its literal braces as the model reads them ({{}} is \boxed{})
            shown = fmt.prompt.format(question="{question}", options="{options}", letters="{letters}")
            heading = "the prompt the model reads, each {field} filled from the item"
        else:  # before anything is printed
            items = external_items({"experiment": "benchmarks", "eval": section["eval"]}, "snippet")[args.format]
            shown = items[0]["prompt"]
            heading = (
                f"{args.path}: {len(items)} items read and checked; the first one's prompt, as the model reads it:"
            )
        print(f"# {args.format}: {fmt.published}\n# {heading}:")
        print("\n".join(f"#   {line}" for line in shown.splitlines()))
        print(yaml.safe_dump(section, sort_keys=False), end="")
        return 0

    parser.set_defaults(run=run)


SUBCOMMANDS = [probe, benchmarks]
