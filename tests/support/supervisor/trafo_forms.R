# Each trafo form emews reads, in the style of Supervisor's workflows/mlrMBO/data/*.R
# (which use trafo = function(x) 2L^x); written for the tests.

param.set <- makeParamSet(
  makeIntegerParam("batch_size", lower = 5, upper = 10, trafo = function(x) 2^x),
  makeIntegerParam("units", lower = 1, upper = 4, trafo = function(x) round(x * 2.5)),
  makeIntegerParam("filters", lower = 0, upper = 6, trafo = function(x) as.integer(10^(x / 3))),
  makeIntegerParam("layers", lower = -2, upper = 2, trafo = function(x) { 2^-x * 3 + 1 }),
  makeIntegerParam("width", lower = 1, upper = 5, trafo = function(x) x * 16),
  makeNumericParam("learning_rate", lower = -5, upper = -1, trafo = function(x) 10^x),
  makeNumericParam("decay", lower = -4, upper = 0, trafo = function(x) 0.5 * exp(x)),
  makeNumericParam("dropout", lower = 0, upper = 9, trafo = function(x) x * 0.1),
  makeNumericParam("momentum", lower = 1, upper = 3, trafo = function(x) 1 - x / 4),
  makeLogicalParam("residual")
)
