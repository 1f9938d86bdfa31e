"""CANDLE/Supervisor's own files: mlrMBO ``makeParamSet`` spaces (:mod:`._rparamset`)."""
