"""The Python tree's shape: one package (python/attnlab) found through PYTHONPATH, no path edits, no import cycle.

    PYTHONPATH=python /usr/bin/python3 -m unittest discover -s tests/python -t . -p 'test_package.py'
"""
import ast
import os
import subprocess
import unittest

# Spelled in pieces so that this file does not match itself.
PATH_EDITS = ("sys.path." + "insert", "sys.path." + "append", "noqa: " + "E402")
ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
PACKAGE = os.path.join(ROOT, "python", "attnlab")


def package_modules():
    """{dotted module name: path} of every module of python/attnlab (a package is its __init__)."""
    modules = {}
    for directory, _, files in os.walk(PACKAGE):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(directory, name)
                dotted = os.path.relpath(path, os.path.dirname(PACKAGE))[:-3].replace(os.sep, ".")
                modules[dotted[:-len(".__init__")] if dotted.endswith(".__init__") else dotted] = path
    return modules


def import_graph(modules):
    """{module: the package modules it imports}, from every import statement (at module level or in a function)."""
    graph = {}
    for module, path in modules.items():
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
        deps = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
            else:
                continue
            deps.update(n for n in names if n in modules and n != module)
        # Importing a submodule runs its packages' __init__ first: that edge is not a dependency of the code.
        graph[module] = {d for d in deps if not module.startswith(d + ".")}
    return graph


def cycles(graph):
    """Every cycle found by a depth-first search, as a list of modules ending where it starts."""
    found, color, stack = [], {}, []

    def visit(u):
        color[u] = "open"
        stack.append(u)
        for v in sorted(graph[u]):
            if color.get(v) == "open":
                found.append(stack[stack.index(v):] + [v])
            elif v not in color:
                visit(v)
        stack.pop()
        color[u] = "done"

    for module in sorted(graph):
        if module not in color:
            visit(module)
    return found


def tracked_python_files():
    out = subprocess.run(["git", "ls-files", "-z", "--", "*.py"], cwd=ROOT, capture_output=True, check=True)
    return [p for p in out.stdout.decode("utf-8").split("\0") if p and os.path.exists(os.path.join(ROOT, p))]


class Package(unittest.TestCase):
    def test_the_cycle_finder_finds_a_cycle(self):
        self.assertEqual(cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}), [["a", "b", "c", "a"]])
        self.assertEqual(cycles({"a": {"b"}, "b": set()}), [])

    def test_no_import_cycle(self):
        graph = import_graph(package_modules())
        self.assertGreater(sum(map(len, graph.values())), 50)   # the graph is the real one, not an empty parse
        self.assertEqual(cycles(graph), [])

    def test_no_path_edits_in_tracked_python(self):
        files = tracked_python_files()
        self.assertIn("python/attnlab/paths.py", files)
        offenders = []
        for path in files:
            with open(os.path.join(ROOT, path), encoding="utf-8") as f:
                text = f.read()
            if any(edit in text for edit in PATH_EDITS):
                offenders.append(path)
        self.assertEqual(offenders, [])

    def test_models_holds_artifacts_only(self):
        python_files = [p for p in tracked_python_files() if p.startswith("models/")]
        self.assertEqual(python_files, [])
        self.assertTrue(os.path.exists(os.path.join(ROOT, "models", "manifest.json")))


if __name__ == "__main__":
    unittest.main()
