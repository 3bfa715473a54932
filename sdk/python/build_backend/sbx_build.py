"""The SDK's own PEP 517 / PEP 660 build backend, standard library only.

Why not setuptools: the SDK promises `pip install --no-index --no-build-isolation ./sdk/python` in a
fresh venv of Debian 12's python3, which has pip 23.0.1 and setuptools 66 but no `wheel` package, and
setuptools cannot build a wheel without it ("invalid command 'bdist_wheel'"). The SDK is a pure-Python
package of a few files, so a wheel is a zip of them plus three metadata files (PEP 427, PEP 566 and
PEP 376's RECORD); that is all this module writes. It needs nothing to be installed, so it also works
with build isolation and no index (requires = []).

Metadata comes from pyproject.toml's [project] table (read with tomllib where Python has it, 3.11+;
else with the small reader below, which takes only the forms that file uses).
"""

import base64
import hashlib
import io
import os
import re
import tarfile
import time
import zipfile

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_PACKAGE = "sbx"
_FIXED_TIME = (1980, 1, 1, 0, 0, 0)  # zip entries' times: the same bytes from the same tree


def _read_project():
    path = os.path.join(_ROOT, "pyproject.toml")
    with open(path, "rb") as f:
        data = f.read()
    try:
        import tomllib
    except ImportError:
        return _read_project_plain(data.decode("utf-8"))
    return tomllib.loads(data.decode("utf-8"))["project"]


def _read_project_plain(text):
    """[project]'s `key = "s"`, `key = ["a", "b"]` and `key = {text = "s"}` lines, nothing else."""
    project, in_project = {}, False
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("["):
            in_project = line == "[project]"
            continue
        m = re.match(r'^([A-Za-z0-9_-]+)\s*=\s*(.+)$', line)
        if not in_project or not m:
            continue
        key, value = m.group(1), m.group(2)
        strings = re.findall(r'"((?:[^"\\]|\\.)*)"', value)
        if value.startswith("["):
            project[key] = strings
        elif value.startswith("{"):
            project[key] = {"text": strings[0]} if strings else {}
        elif strings:
            project[key] = strings[0]
    return project


def _metadata():
    p = _read_project()
    lines = [
        "Metadata-Version: 2.1",
        "Name: " + p["name"],
        "Version: " + p["version"],
    ]
    if p.get("description"):
        lines.append("Summary: " + p["description"])
    if p.get("requires-python"):
        lines.append("Requires-Python: " + p["requires-python"])
    lic = p.get("license")
    if isinstance(lic, dict) and lic.get("text"):
        lines.append("License: " + lic["text"])
    for c in p.get("classifiers", []):
        lines.append("Classifier: " + c)
    body = ""
    readme = p.get("readme")
    if readme:
        lines.append("Description-Content-Type: text/markdown")
        with open(os.path.join(_ROOT, readme), encoding="utf-8") as f:
            body = f.read()
    return p["name"], p["version"], "\n".join(lines) + "\n\n" + body


def _package_files():
    """(path in the wheel, path on disk) of the package: its .py files and py.typed."""
    out = []
    top = os.path.join(_ROOT, _PACKAGE)
    for dirpath, dirnames, filenames in os.walk(top):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for name in sorted(filenames):
            if name.endswith(".py") or name == "py.typed":
                disk = os.path.join(dirpath, name)
                out.append((os.path.relpath(disk, _ROOT).replace(os.sep, "/"), disk))
    return out


def _record_line(arcname, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "%s,sha256=%s,%d" % (arcname, digest, len(data))


def _write_wheel(wheel_directory, files):
    """files: [(arcname, bytes)] of the package; adds dist-info and returns the wheel's name."""
    name, version, metadata = _metadata()
    dist_info = "%s-%s.dist-info" % (name, version)
    wheel = "Wheel-Version: 1.0\nGenerator: sbx_build\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    files = list(files) + [
        (dist_info + "/METADATA", metadata.encode("utf-8")),
        (dist_info + "/WHEEL", wheel.encode()),
    ]
    record = [_record_line(a, d) for a, d in files] + [dist_info + "/RECORD,,"]
    files.append((dist_info + "/RECORD", ("\n".join(record) + "\n").encode()))
    filename = "%s-%s-py3-none-any.whl" % (name, version)
    tmp = os.path.join(wheel_directory, "." + filename + ".tmp")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
        for arcname, data in files:
            info = zipfile.ZipInfo(arcname, _FIXED_TIME)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    os.replace(tmp, os.path.join(wheel_directory, filename))
    return filename


def _read(path):
    with open(path, "rb") as f:
        return f.read()


# ---- PEP 517 -----------------------------------------------------------------------------------


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    name, version, metadata = _metadata()
    dist_info = "%s-%s.dist-info" % (name, version)
    os.makedirs(os.path.join(metadata_directory, dist_info), exist_ok=True)
    with open(os.path.join(metadata_directory, dist_info, "METADATA"), "w", encoding="utf-8") as f:
        f.write(metadata)
    return dist_info


prepare_metadata_for_build_editable = prepare_metadata_for_build_wheel


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _write_wheel(wheel_directory, [(a, _read(d)) for a, d in _package_files()])


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    """PEP 660: a wheel whose one file is a .pth naming the source tree."""
    pth = (_ROOT + "\n").encode()
    return _write_wheel(wheel_directory, [("__editable__.%s.pth" % _PACKAGE, pth)])


def build_sdist(sdist_directory, config_settings=None):
    name, version, metadata = _metadata()
    base = "%s-%s" % (name, version)
    members = [("pyproject.toml", os.path.join(_ROOT, "pyproject.toml")),
               ("README.md", os.path.join(_ROOT, "README.md")),
               ("build_backend/sbx_build.py", os.path.abspath(__file__))]
    members += _package_files()
    filename = base + ".tar.gz"
    tmp = os.path.join(sdist_directory, "." + filename + ".tmp")
    mtime = int(time.time())
    with tarfile.open(tmp, "w:gz", format=tarfile.PAX_FORMAT) as t:
        for arcname, data in [("PKG-INFO", metadata.encode("utf-8"))] + [
                (a, _read(d)) for a, d in members]:
            info = tarfile.TarInfo(base + "/" + arcname)
            info.size, info.mode, info.mtime = len(data), 0o644, mtime
            t.addfile(info, io.BytesIO(data))
    os.replace(tmp, os.path.join(sdist_directory, filename))
    return filename
