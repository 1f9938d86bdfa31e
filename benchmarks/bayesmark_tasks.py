"""Bayesmark's tasks (Uber's Bayesmark 0.0.8, ``bayesmark/sklearn_funcs.py`` and ``data.py``),
written from its definitions for current scikit-learn: a model, one of scikit-learn's bundled
datasets and a metric; the loss is the metric's mean over 5-fold cross-validation on the first
80% of the data (Bayesmark holds out 20%, ``train_test_split(test_size=0.2, random_state=0)``).

Bayesmark's search spaces, translated as every contender sees them: ``log`` stays log, ``linear``
and ``logit`` become uniform (no optimizer here, ours or a peer's, has a logit scale), ``bool``
is a categorical of ``True``, ``False``. Its metrics as losses: ``acc`` is the cross-validated
error (1 - accuracy: Bayesmark minimizes -accuracy, which differs by a constant, so its
normalized score is the same), ``nll`` the log-loss, ``mse`` and ``mae`` the regressors' errors.
What scikit-learn dropped since: ``multi_class="ovr"`` is ``OneVsRestClassifier`` (the same
model), and the lasso and ridge regressors' ``normalize`` flag is gone from their spaces.

:func:`objective` is what a study calls (``benchmarks.bayesmark_tasks:objective``): the point
carries its task's name as the constant ``task``.
"""

import functools
import warnings

KNN = {"n_neighbors": ("int", 1, 25), "p": ("int", 1, 4)}
SVM = {"C": ("log", 1.0, 1e3), "gamma": ("log", 1e-4, 1e-3), "tol": ("log", 1e-5, 1e-1)}
TREE = {"max_depth": ("int", 1, 15), "min_samples_split": ("real", 0.01, 0.99),
        "min_samples_leaf": ("real", 0.01, 0.49),
        "min_weight_fraction_leaf": ("real", 0.01, 0.49), "max_features": ("real", 0.01, 0.99),
        "min_impurity_decrease": ("real", 0.0, 0.5)}
MLP = {"hidden_layer_sizes": ("int", 50, 200), "alpha": ("log", 1e-5, 1e1),
       "batch_size": ("int", 10, 250), "learning_rate_init": ("log", 1e-5, 1e-1),
       "tol": ("log", 1e-5, 1e-1), "validation_fraction": ("real", 0.1, 0.9)}
MLP_ADAM = {**MLP, "beta_1": ("real", 0.5, 0.99), "beta_2": ("real", 0.9, 1.0 - 1e-6),
            "epsilon": ("log", 1e-9, 1e-6)}
MLP_SGD = {**MLP, "power_t": ("real", 0.1, 0.9), "momentum": ("real", 0.001, 0.999)}
ADA = {"n_estimators": ("int", 10, 100), "learning_rate": ("log", 1e-4, 1e1)}
LOGISTIC = {"C": ("log", 1e-2, 1e2), "intercept_scaling": ("log", 1e-2, 1e2)}
LASSO = {"alpha": ("log", 1e-2, 1e2), "fit_intercept": ("bool",), "max_iter": ("logint", 10, 5000),
         "tol": ("log", 1e-5, 1e-1), "positive": ("bool",)}
RIDGE = {"alpha": ("log", 1e-2, 1e2), "fit_intercept": ("bool",),
         "max_iter": ("logint", 10, 5000), "tol": ("log", 1e-4, 1e-1)}

# model: (classifier space, regressor space)
SPACES = {"kNN": (KNN, KNN), "SVM": (SVM, SVM), "DT": (TREE, TREE), "RF": (TREE, TREE),
          "MLP-adam": (MLP_ADAM, MLP_ADAM), "MLP-sgd": (MLP_SGD, MLP_SGD), "ada": (ADA, ADA),
          "lasso": (LOGISTIC, LASSO), "linear": (LOGISTIC, RIDGE)}
DATASETS = {"breast": "load_breast_cancer", "digits": "load_digits", "iris": "load_iris",
            "wine": "load_wine", "diabetes": "load_diabetes"}
REGRESSION = ("diabetes",)
SCORERS = {"acc": "accuracy", "nll": "neg_log_loss", "mse": "neg_mean_squared_error",
           "mae": "neg_mean_absolute_error"}
# The tasks of the part: (model, dataset, metric), classifiers first. Cheap ones: a full run is
# 16 rounds x 8 points x 10 seeds x every contender of each. Not kNN: its space has 100 points,
# fewer than the budget of 128 (SMAC3, which proposes no configuration twice, never returns).
TASKS = ("SVM-iris-acc", "SVM-wine-nll", "DT-breast-acc", "RF-wine-nll", "DT-digits-acc",
         "linear-breast-nll", "lasso-wine-acc", "MLP-adam-iris-nll", "RF-diabetes-mae",
         "DT-diabetes-mae", "RF-diabetes-mse", "lasso-diabetes-mae", "linear-diabetes-mse",
         "SVM-diabetes-mae")
CV_SPLITS = 5


def parse(task):
    """``(model, dataset, metric)`` of a task's name, ``MODEL-DATASET-METRIC``."""
    model, dataset, metric = task.rsplit("-", 2)
    if model not in SPACES or dataset not in DATASETS or metric not in SCORERS:
        raise ValueError(f"{task!r} is not a Bayesmark task MODEL-DATASET-METRIC with MODEL in "
                         f"{', '.join(SPACES)}, DATASET in {', '.join(DATASETS)} and METRIC in "
                         f"{', '.join(SCORERS)}")
    return model, dataset, metric


def group(task):
    """``classifiers`` or ``regressors``."""
    return "regressors" if parse(task)[1] in REGRESSION else "classifiers"


def space(task):
    """The task's search space (an :class:`emews._space.Space`, with the constant ``task``)."""
    from emews._space import Categorical, Constant, Float, Int, Space

    model, dataset, _ = parse(task)
    made = {"int": lambda n, lo, hi: Int(n, lo, hi),
            "logint": lambda n, lo, hi: Int(n, lo, hi, log=True),
            "real": lambda n, lo, hi: Float(n, lo, hi),
            "log": lambda n, lo, hi: Float(n, lo, hi, log=True),
            "bool": lambda n: Categorical(n, (True, False))}
    definitions = SPACES[model][dataset in REGRESSION]
    return Space((*(made[kind](name, *bounds) for name, (kind, *bounds) in definitions.items()),
                  Constant("task", task)))


def estimator(model, regression, params):
    """Bayesmark's scikit-learn model ``model`` with its fixed settings and ``params``."""
    from sklearn import ensemble, linear_model, multiclass, neighbors, neural_network, svm, tree

    mlp = neural_network.MLPRegressor if regression else neural_network.MLPClassifier
    sgd = {"solver": "sgd", "early_stopping": True, "learning_rate": "invscaling",
           "nesterovs_momentum": True, **({"activation": "tanh"} if regression else {})}
    if regression:
        made = {"kNN": lambda: neighbors.KNeighborsRegressor(**params),
                "SVM": lambda: svm.SVR(kernel="rbf", **params),
                "DT": lambda: tree.DecisionTreeRegressor(max_leaf_nodes=None, **params),
                "RF": lambda: ensemble.RandomForestRegressor(n_estimators=10, **params),
                "ada": lambda: ensemble.AdaBoostRegressor(**params),
                "lasso": lambda: linear_model.Lasso(**params),
                "linear": lambda: linear_model.Ridge(solver="auto", **params)}
    else:
        def logistic(penalty):
            return multiclass.OneVsRestClassifier(linear_model.LogisticRegression(
                penalty=penalty, fit_intercept=True, solver="liblinear", **params))

        made = {"kNN": lambda: neighbors.KNeighborsClassifier(**params),
                "SVM": lambda: svm.SVC(kernel="rbf", probability=True, **params),
                "DT": lambda: tree.DecisionTreeClassifier(max_leaf_nodes=None, **params),
                "RF": lambda: ensemble.RandomForestClassifier(n_estimators=10, **params),
                "ada": lambda: ensemble.AdaBoostClassifier(**params),
                "lasso": lambda: logistic("l1"), "linear": lambda: logistic("l2")}
    made["MLP-adam"] = lambda: mlp(solver="adam", early_stopping=True, **params)
    made["MLP-sgd"] = lambda: mlp(**sgd, **params)
    return made[model]()


@functools.cache
def data(dataset):
    """The first 80% of a dataset after Bayesmark's shuffle: ``(x, y)``."""
    import sklearn.datasets
    from sklearn.model_selection import train_test_split

    x, y = getattr(sklearn.datasets, DATASETS[dataset])(return_X_y=True)
    x_train, _, y_train, _ = train_test_split(x, y, test_size=0.2, random_state=0, shuffle=True)
    return x_train, y_train


def loss(task, params):
    """The task's cross-validated loss at ``params`` (a dict of its search space's values)."""
    from sklearn.model_selection import cross_val_score

    model, dataset, metric = parse(task)
    x, y = data(dataset)
    with warnings.catch_warnings():      # as Bayesmark: optimizers try odd settings
        warnings.simplefilter("ignore")
        scores = cross_val_score(estimator(model, dataset in REGRESSION, params), x, y,
                                 scoring=SCORERS[metric], cv=CV_SPLITS)
    score = float(scores.mean())
    return 1.0 - score if metric == "acc" else -score


def objective(point):
    """A study's objective: the loss of the task named by the point's ``task``."""
    params = {k: v for k, v in point.items() if k != "task"}
    return loss(point["task"], params)
