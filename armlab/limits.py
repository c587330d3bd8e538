"""The sizes a config and its input files may reach unless the config's ``limits:`` section raises them: the defaults
of :class:`armlab.spec.Limits` (where each limit's default and meaning are written), as the mapping every reader
takes."""

import dataclasses

from armlab.spec import Limits

DEFAULT_LIMITS: dict[str, int] = dataclasses.asdict(Limits())
