"""``python -m armlab.spec --check`` / ``--write``: the files generated from the spec (:mod:`armlab.schema`)."""

from armlab.schema import main

raise SystemExit(main())
