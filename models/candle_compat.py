"""CANDLE's parameter layer, for models written against candle_lib when it is not installed.

The model runner registers this module as ``candle`` when ``import candle`` fails, so a model
that does ``import candle`` runs unchanged. It gives what a model needs to get its parameters:

* :class:`Benchmark` (``filepath, defmodel, framework, prog, desc, parser,
  additional_definitions, required``, with the ``set_locals()`` hook) and
  :func:`finalize_parameters`, plus :func:`create_params`;
* the default-model file: INI with a ``[Global_Params]`` section, each value a Python literal
  read with :func:`ast.literal_eval` (candle_lib uses ``eval``; this layer never does);
* command-line overrides (``--epochs 5``, ``--dense 64 32``, ``--config_file other.txt``),
  typed by candle's common definitions and the model's ``additional_definitions``;
* ``data_dir = $CANDLE_DATA_DIR/<model_name>/Data`` and ``output_dir =
  ${CANDLE_OUTPUT_DIR:-$CANDLE_DATA_DIR}/<model_name>/Output/<experiment_id>/<run_id>``;
* the defaults ``experiment_id = 'EXP000'``, ``run_id = 'RUN000'``, ``rng_seed = 7102``,
  ``timeout = -1``;
* :class:`TerminateOnTimeOut`, the Keras callback that stops training softly after
  ``params['timeout']`` seconds (Keras is imported only when it is asked for).

Precedence: command line, then the default-model file, then the definitions' defaults.
Anything else of candle_lib is not here: asking for it names the package to install.
"""

import argparse
import ast
import configparser
import os
import time

from emews.plugin import ConfigError

SECTION = "Global_Params"
COMMON_DEFAULTS = {"experiment_id": "EXP000", "run_id": "RUN000", "rng_seed": 7102,
                   "timeout": -1}


def str2bool(text):
    """candle's boolean parser for the command line (``true``/``false``, ``1``/``0``, ...)."""
    if isinstance(text, bool):
        return text
    lowered = str(text).strip().lower()
    if lowered in ("yes", "true", "t", "y", "1"):
        return True
    if lowered in ("no", "false", "f", "n", "0"):
        return False
    raise argparse.ArgumentTypeError(f"a boolean is expected, got {text!r}")


def _definition(name, type_=str, nargs=None):
    entry = {"name": name, "type": type_}
    if nargs:
        entry["nargs"] = nargs
    return entry


# candle_lib's common keywords with their command-line types (parsing_utils.registered_conf).
COMMON_DEFINITIONS = [
    _definition(name, type_, nargs) for name, type_, nargs in (
        ("config_file", str, None), ("data_type", str, None), ("rng_seed", float, None),
        ("train_bool", str2bool, None), ("eval_bool", str2bool, None), ("timeout", int, None),
        ("gpus", int, "+"), ("profiling", str2bool, None), ("save_path", str, None),
        ("model_name", str, None), ("home_dir", str, None), ("train_data", str, None),
        ("val_data", str, None), ("test_data", str, None), ("output_dir", str, None),
        ("data_url", str, None), ("experiment_id", str, None), ("run_id", str, None),
        ("verbose", str2bool, None), ("logfile", str, None), ("scaling", str, None),
        ("shuffle", str2bool, None), ("feature_subsample", int, None), ("dense", int, "+"),
        ("conv", int, "+"), ("locally_connected", str2bool, None), ("activation", str, None),
        ("out_activation", str, None), ("lstm_size", int, "+"),
        ("recurrent_dropout", float, None), ("dropout", float, None), ("pool", int, None),
        ("batch_normalization", str2bool, None), ("loss", str, None), ("optimizer", str, None),
        ("metrics", str, None), ("epochs", int, None), ("batch_size", int, None),
        ("learning_rate", float, None), ("early_stop", str2bool, None),
        ("momentum", float, None), ("initialization", str, None), ("val_split", float, None),
        ("train_steps", int, None), ("val_steps", int, None), ("test_steps", int, None),
        ("train_samples", int, None), ("val_samples", int, None),
    )
]


def read_default_model(path):
    """The parameters of a default-model file (INI, values are Python literals)."""
    path = str(path)
    if not os.path.isfile(path):
        raise ConfigError(path, "the default-model file must exist", path, show_value=False)
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read(path)
    except configparser.Error as exc:
        raise ConfigError(path, f"must be an INI file ({exc.message})", None,
                          show_value=False) from None
    if not parser.sections():
        raise ConfigError(path, f"must have a [{SECTION}] section", None, show_value=False)
    params = {}
    for section in parser.sections():
        for key, text in parser.items(section):
            if key in params:
                continue
            try:
                params[key] = ast.literal_eval(text)
            except (ValueError, SyntaxError):
                raise ConfigError(f"{path}: [{section}] {key}", "must be a Python literal "
                                  "(a number, a 'quoted string', a [list], True, False or None)",
                                  text) from None
    return params


class Benchmark:
    """A model's parameter definitions and default-model file (candle_lib's interface)."""

    def __init__(self, filepath, defmodel, framework, prog=None, desc=None, parser=None,
                 additional_definitions=None, required=None):
        self.file_path = filepath
        self.default_model = defmodel
        self.framework = framework
        self.parser = parser or argparse.ArgumentParser(prog=prog, description=desc,
                                                        conflict_handler="resolve")
        self.registered_conf = list(COMMON_DEFINITIONS)
        self.additional_definitions = list(additional_definitions or [])
        self.required = set(required or [])
        self.conffile = os.path.join(filepath, defmodel)
        self.set_locals()

    def set_locals(self):
        """Hook for subclasses: set ``required`` and ``additional_definitions``."""

    def parse_parameters(self):
        """Add the common and the model's definitions to the argument parser."""
        for definition in self.registered_conf + self.additional_definitions:
            _add_argument(self.parser, definition)

    def read_config_file(self, file):
        """The parameters of a default-model file."""
        return read_default_model(file)

    def check_required_exists(self, params):
        """Raise when a required parameter is missing."""
        missing = sorted(self.required - set(params))
        if missing:
            raise ConfigError(self.conffile, "must set the model's required parameters",
                              missing)


def _add_argument(parser, definition):
    kwargs = {"dest": definition["name"], "default": argparse.SUPPRESS,
              "help": definition.get("help", "")}
    if definition.get("type") is not None:
        kwargs["type"] = definition["type"]
    for key in ("nargs", "choices"):
        if key in definition:
            kwargs[key] = definition[key]
    if definition.get("action") not in (None, "store"):
        raise ConfigError(f"definition {definition['name']!r}", "emews' candle layer supports "
                          "plain options only; install candle_lib for actions",
                          definition["action"])
    flags = ["--" + definition["name"]]
    if definition.get("abv"):
        flags.insert(0, "-" + definition["abv"])
    parser.add_argument(*flags, **kwargs)


def finalize_parameters(bmk, argv=None):
    """The model's parameters: definitions' defaults < default-model file < command line.

    ``argv`` defaults to ``sys.argv[1:]``. Sets ``data_dir`` and ``output_dir`` (and makes them).
    """
    bmk.parse_parameters()
    args = vars(bmk.parser.parse_args(argv))
    conffile = bmk.conffile
    if "config_file" in args:
        conffile = args["config_file"]
        if not os.path.isabs(conffile):
            conffile = os.path.join(bmk.file_path, conffile)
    params = {d["name"]: d["default"] for d in bmk.additional_definitions
              if d.get("default") not in (None, argparse.SUPPRESS)}
    params.update(bmk.read_config_file(conffile))
    params.update(args)
    for key, value in COMMON_DEFAULTS.items():
        params.setdefault(key, value)
    bmk.check_required_exists(params)
    params["data_dir"], params["output_dir"] = directory_tree(params, conffile)
    return params


def create_params(file_path=None, default_model=None, framework=None, prog_name=None,
                  desc=None, additional_definitions=None, required=None):
    """Build a :class:`Benchmark` and finalize its parameters in one call."""
    return finalize_parameters(Benchmark(file_path, default_model, framework, prog_name, desc,
                                         additional_definitions=additional_definitions,
                                         required=required))


def directory_tree(params, conffile="the default-model file"):
    """``(data_dir, output_dir)`` under ``CANDLE_DATA_DIR``, both created."""
    root = os.environ.get("CANDLE_DATA_DIR")
    if not root:
        raise ConfigError("CANDLE_DATA_DIR", "the environment variable must name the CANDLE "
                          "data directory", root)
    if "model_name" not in params:
        raise ConfigError(conffile, "must set model_name", None, show_value=False)
    model = str(params["model_name"])
    data_dir = os.path.abspath(os.path.join(root, model, "Data"))
    output_dir = params.get("output_dir")
    if not output_dir:
        output_dir = os.path.join(os.environ.get("CANDLE_OUTPUT_DIR") or root, model, "Output",
                                  str(params["experiment_id"]), str(params["run_id"]))
    output_dir = os.path.abspath(output_dir)
    os.makedirs(data_dir, exist_ok=True)
    os.makedirs(output_dir, exist_ok=True)
    return data_dir, output_dir


def _terminate_on_timeout_class():
    try:
        import keras
    except ImportError:
        raise ImportError("candle.TerminateOnTimeOut needs Keras: pip install "
                          "'emews-hpo[keras]'") from None

    class TerminateOnTimeOut(keras.callbacks.Callback):
        """Stop training at the end of the epoch during which ``timeout_in_sec`` passed.

        ``-1`` (or any value <= 0) means no limit.
        """

        def __init__(self, timeout_in_sec=10):
            super().__init__()
            self.timeout_in_sec = timeout_in_sec
            self.started = None

        def on_train_begin(self, logs=None):
            self.started = time.monotonic()

        def on_epoch_end(self, epoch, logs=None):
            elapsed = time.monotonic() - self.started
            if 0 < self.timeout_in_sec <= elapsed:
                print(f"TerminateOnTimeOut: stopping after {elapsed:.1f} s "
                      f"(timeout {self.timeout_in_sec} s)", flush=True)
                self.model.stop_training = True

    return TerminateOnTimeOut


def __getattr__(name):
    if name == "TerminateOnTimeOut":
        cls = _terminate_on_timeout_class()
        globals()[name] = cls
        return cls
    raise AttributeError(f"emews' stand-in for candle_lib has no {name!r}; install candle_lib "
                         f"for the whole library")
