# Mirrors the form of Supervisor's workflows/mlrMBO/data/*_nightly.R, written for the tests:
# the space of the toy model tests/support/supervisor_models/sup_baseline_keras2.py.

param.set <- makeParamSet(
  makeNumericParam("x", lower=0, upper=4),
  makeDiscreteParam("epochs", values=c(3))
)
