# Mirrors Supervisor's models/OneD/oned.py: the Benchmark class of the OneD model, candle_lib's
# candle.Benchmark extended with the model's own argument definitions (x, new_keyword).
import candle

additional_definitions = [
    {"name": "x", "type": float, "nargs": 1, "help": "1D function, derived from cosine mixture"},
    {"name": "new_keyword", "type": str, "nargs": 1, "help": "helpful description"},
]

required = None


class IBenchmark(candle.Benchmark):

    def set_locals(self):
        if required is not None:
            self.required = set(required)
        if additional_definitions is not None:
            self.additional_definitions = additional_definitions
