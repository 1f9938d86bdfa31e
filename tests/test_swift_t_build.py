"""``emews swift-t build``: the suite's own Swift/T is this command's build (the ``swift_t``
fixture), and it runs a Swift program that calls this Python; a second call returns at once; an
unreachable download fails in one line naming ``--source``; a download that is not the pinned
source is refused, and so is a source that is not Swift/T; a missing prerequisite is named with
its packages."""

import http.server
import os
import shutil
import socket
import subprocess
import sys
import tarfile
import threading
from pathlib import Path

import pytest

import emews
from emews.launch._swift_t import PREREQUISITES, TREE_SHA256, URL_VARIABLE, build_path, \
    tree_digest
from support.swift_t import launcher_env, source, swift_t  # noqa: F401 - swift_t: fixture

HELLO = """
import io;
import python;
printf("embedded: %s", python_persist("import emews, sys",
                                      "emews.__file__ + ' ' + sys.version.split()[0]"));
"""


def emews_swift_t_build(*args, **env):
    return subprocess.run([sys.executable, "-m", "emews", "swift-t", "build", *args],
                          env=dict(os.environ, **env), capture_output=True, text=True,
                          timeout=120)


@pytest.fixture
def closed_url():
    """A URL on a loopback port that refuses connections (bound, never listening)."""
    with socket.socket() as bound:
        bound.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{bound.getsockname()[1]}/swift-t.tar.gz"


@pytest.mark.slow
def test_the_built_swift_t_runs_a_swift_program_that_calls_this_python(tmp_path, swift_t):
    (tmp_path / "hello.swift").write_text(HELLO)
    env = dict(os.environ, PATH=os.pathsep.join([*swift_t, str(Path(sys.executable).parent),
                                                 os.environ["PATH"]]), **launcher_env())
    done = subprocess.run(["swift-t", "-n", "2", "hello.swift"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stdout + done.stderr
    version = ".".join(map(str, sys.version_info[:3]))
    assert f"embedded: {emews.__file__} {version}" in done.stdout.splitlines()


@pytest.mark.slow
def test_a_second_build_with_the_same_prefix_returns_at_once(swift_t, closed_url):
    prefix = Path(swift_t[0]).parent.parent
    done = emews_swift_t_build("--prefix", str(prefix), **{URL_VARIABLE: closed_url})
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == os.pathsep.join(swift_t)
    assert done.stderr == ""   # nothing built, nothing downloaded (the URL refuses)


@pytest.mark.slow
def test_an_unreachable_download_fails_in_one_line_naming_source(tmp_path, swift_t, closed_url):
    prefix = tmp_path / "swift-t"
    done = emews_swift_t_build("--prefix", str(prefix), **{URL_VARIABLE: closed_url})
    assert done.returncode == 1
    [line] = done.stderr.splitlines()
    assert line.startswith(f"emews: error: emews swift-t build: cannot download Swift/T from "
                           f"{closed_url}")
    assert "--source TARBALL|DIR" in line
    assert not prefix.exists()


@pytest.mark.slow
def test_a_download_that_is_not_the_pinned_source_is_refused(tmp_path, swift_t):
    served = tmp_path / "served"
    (served / "swift-t" / "dev" / "build").mkdir(parents=True)
    (served / "swift-t" / "dev" / "build" / "build-swift-t.sh").write_text("exit 0\n")
    with tarfile.open(tmp_path / "swift-t.tar.gz", "w:gz") as archive:
        archive.add(served / "swift-t", arcname="swift-t")
    handler = lambda *args: http.server.SimpleHTTPRequestHandler(  # noqa: E731
        *args, directory=str(tmp_path))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/swift-t.tar.gz"
        done = emews_swift_t_build("--prefix", str(tmp_path / "swift-t"), **{URL_VARIABLE: url})
    finally:
        server.shutdown()
        server.server_close()
    assert done.returncode == 1
    [line] = done.stderr.splitlines()
    digest = tree_digest(tmp_path / "swift-t.tar.gz")
    assert line == (f"emews: error: emews swift-t build: {url} is not Swift/T e96b808: its "
                    f"source tree's sha256 is {digest}, not {TREE_SHA256}; give its source "
                    "with --source")
    assert not (tmp_path / "swift-t").exists()


def test_the_pinned_digest_is_the_digest_of_the_suites_swift_t_source():
    """The vendored tarball is ``git archive`` of the pinned commit, as GitHub's download is."""
    tarball = source()
    if tarball is None or not tarball.is_file():
        pytest.skip("no Swift/T source tarball here (EMEWS_SWIFT_T_SOURCE or ../shared/vendor)")
    assert tree_digest(tarball) == TREE_SHA256


@pytest.mark.slow
def test_a_missing_prerequisite_is_named_with_its_packages(tmp_path, swift_t):
    tools = tmp_path / "bin"
    tools.mkdir()
    for item in PREREQUISITES:
        if item.program != "ant":
            (tools / item.program).symlink_to(shutil.which(item.program, path=build_path()))
    done = emews_swift_t_build("--no-apt", "--prefix", str(tmp_path / "swift-t"),
                               PATH=str(tools))
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        "emews: error: emews swift-t build: the build needs programs that are not on PATH: "
        "ant (Debian: ant; RPM: ant; conda: ant)"]
    assert not (tmp_path / "swift-t").exists()


@pytest.mark.slow
@pytest.mark.parametrize("given, rule", [
    ("absent.tar.gz", "must be a Swift/T source tarball or directory, and there is no such file"),
    ("empty", "must hold Swift/T's source (dev/build/build-swift-t.sh, at its top or in its "
              "one top directory)")])
def test_a_source_that_is_not_swift_t_is_refused_in_one_line(tmp_path, swift_t, given, rule):
    (tmp_path / "empty").mkdir()
    done = emews_swift_t_build("--source", str(tmp_path / given), "--prefix",
                               str(tmp_path / "swift-t"))
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"emews: error: emews swift-t build --source: {rule}, got {str(tmp_path / given)!r}"]
    assert not (tmp_path / "swift-t").exists()
