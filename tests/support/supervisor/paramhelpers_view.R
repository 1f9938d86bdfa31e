# R ParamHelpers' view of the makeParamSet in the file named by the first argument, one record a
# line, tab-separated (numbers with 17 significant digits):
#   param   id  type  lower  upper        (bounds empty for discrete and logical parameters)
#   value   id  class value               (each value of a discrete or logical parameter)
#   trafo   id  x     trafoValue(x)       (integers lower..upper; numerics at 5 points)
suppressPackageStartupMessages(library(ParamHelpers))
file <- commandArgs(trailingOnly = TRUE)[1]
env <- new.env()
sys.source(file, envir = env)
param.set <- get("param.set", envir = env)
number <- function(v) sprintf("%.17g", v)
for (p in param.set$pars) {
  cat("param", p$id, p$type, number(p$lower), number(p$upper), sep = "\t")
  cat("\n")
  if (p$type %in% c("discrete", "logical")) {
    for (v in p$values) {
      text <- if (is.character(v)) v else if (is.logical(v)) as.character(v) else number(v)
      cat("value", p$id, class(v), text, sep = "\t")
      cat("\n")
    }
  }
  if (!is.null(p$trafo)) {
    xs <- if (p$type == "integer") seq(p$lower, p$upper) else
      p$lower + (p$upper - p$lower) * c(0, 0.25, 0.5, 0.75, 1)
    for (x in xs) {
      cat("trafo", p$id, number(x), number(trafoValue(p, x)), sep = "\t")
      cat("\n")
    }
  }
}
