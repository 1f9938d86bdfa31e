"""``echo``: run nothing; the value is the sum of squares of the numeric parameters."""

from ._base import Implementation


class Echo(Implementation):
    """A stand-in model for testing the machinery."""

    def run(self, params, params_json, context, watch):
        return float(sum(float(v) ** 2 for v in params.values()
                         if isinstance(v, (int, float))))
