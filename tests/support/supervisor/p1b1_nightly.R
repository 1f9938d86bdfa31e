# Mirrors Supervisor's workflows/mlrMBO/data/p1b1_nightly.R (shortened), written for the tests.
# the parameter names should match names of the arguments expected by the benchmark

param.set <- makeParamSet(
  # we optimize for ae and vae separately
  makeDiscreteParam("model", values=c("ae")),

  # makeDiscreteParam("latent_dim", values=c(2, 8, 32, 128, 512)),
  makeIntegerParam("latent_dim", lower=1, upper=9, trafo = function(x) 2L^x),

  makeDiscreteParam("use_landmark_genes", values=c(0)),

#  makeDiscreteParam("dense", values=c("1500 500",
#                                      "978 978")),

  makeDiscreteParam("residual", values=c(1, 0)),
  makeDiscreteParam("activation", values=c("relu", "sigmoid", "tanh")),
  makeNumericParam("learning_rate", lower=0.00001, upper=0.1),
  makeNumericParam("dropout", lower=0, upper=0.9),
  makeIntegerParam("epochs", lower=2, upper=3)
)
