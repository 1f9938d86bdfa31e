"""One exception hierarchy for emews.

Every message names where the problem is (a file, a field), the rule that was broken and the
value that was received, so the command line can print it as one line and exit 2.
"""


class EmewsError(Exception):
    """Base class of every error emews raises on purpose."""


class ConfigError(EmewsError):
    """Bad user input: a configuration file, a search-space file or a setting.

    ``where`` names the file and/or field (``study.toml: [study].budget``), ``rule`` says what
    must hold and ``value`` is what was received.
    """

    def __init__(self, where, rule, value=None, *, show_value=True):
        self.where, self.rule, self.value = where, rule, value
        message = f"{where}: {rule}"
        if show_value:
            message += f", got {value!r}"
        super().__init__(message)


class PluginError(ConfigError):
    """An algorithm or objective that cannot be found or imported."""


def missing_extra(where, needs, extra, error=ConfigError):
    """The one-line error of an optional dependency that is not installed: ``where`` needs
    ``needs``, which ``pip install 'emews-hpo[extra]'`` brings (``error``: its class)."""
    return error(where, f"needs {needs}: pip install 'emews-hpo[{extra}]'", show_value=False)


class MEAborted(EmewsError):
    """The model-exploration thread died; ``traceback`` holds its formatted traceback."""

    def __init__(self, traceback_text):
        self.traceback = traceback_text
        last = traceback_text.strip().splitlines()[-1] if traceback_text.strip() else "unknown error"
        super().__init__(f"the model-exploration algorithm failed: {last}")


class StudyAborted(EmewsError):
    """The failure policy chose to end the study."""


class ProtocolError(EmewsError):
    """A message on the EQ/Py queues that does not follow the wire format."""


class StoreError(EmewsError):
    """The store cannot be read or written (a full disk, a read-only or corrupt file)."""


class Interrupted(EmewsError):
    """The study got SIGINT or SIGTERM; ``signum`` says which."""

    REASON = "cancelled: the study was interrupted"   # the error of what it called off

    def __init__(self, signum):
        self.signum = signum
        super().__init__(f"interrupted by signal {signum}")


class FailureAlreadyReported(EmewsError):
    """A run that failed and has already said why (a spawned job's rank 0 did); ``status`` is
    its exit status."""

    def __init__(self, status):
        self.status = status
        super().__init__(f"exit status {status}")

