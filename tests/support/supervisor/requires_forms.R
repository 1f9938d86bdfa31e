# requires in the forms emews reads (tests/test_conditional_io.py), as ParamHelpers documents them
param.set <- makeParamSet(
  makeDiscreteParam("optimizer", values = c("sgd", "adam", "rmsprop")),
  makeIntegerParam("depth", lower = 1, upper = 4),
  makeLogicalParam("warmup"),
  makeNumericParam("momentum", 0, 0.99, requires = quote(optimizer == "sgd")),
  makeNumericParam("beta", 0, 1, requires = expression(optimizer %in% c("adam", "rmsprop"))),
  makeIntegerParam("width3", 8, 256, requires = quote(depth >= 3L && optimizer != "rmsprop")),
  makeNumericParam("decay", 0, 1, requires = quote(!warmup || (beta > 0.5 & depth < 3))),
  makeLogicalParam("nesterov", requires = quote(momentum > 0.5 | !(depth %in% c(1, 2))))
)
