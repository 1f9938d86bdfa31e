"""``auto``, the default search: the rule's table of choices, a study that names no algorithm,
a resumed one, and the conformance suite (switching from gp to TPE within its budget)."""

from emews.testing import Conformance


class TestAuto(Conformance):
    algorithm = "auto"
    options = {"thresholds": {"gp_max_told": 6}}   # gp's random design, then TPE
