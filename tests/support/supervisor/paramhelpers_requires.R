# R ParamHelpers' judgement of points of a param set with requires: for each row of the CSV
# POINTS (one column per parameter, an inactive parameter NA), "feasible TRUE" or
# "feasible FALSE" (isFeasible: each parameter is set exactly when its requires is TRUE).
# usage: Rscript paramhelpers_requires.R FILE POINTS
suppressPackageStartupMessages(library(ParamHelpers))
args <- commandArgs(trailingOnly = TRUE)
env <- new.env()
sys.source(args[1], envir = env)
param.set <- get("param.set", envir = env)
points <- read.csv(args[2], stringsAsFactors = FALSE)
for (i in seq_len(nrow(points))) {
  values <- lapply(getParamIds(param.set), function(id) points[[id]][i])
  names(values) <- getParamIds(param.set)
  cat("feasible", isFeasible(param.set, values), "\n")
}
