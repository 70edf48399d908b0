#!/usr/bin/env python3
"""The build's layer include roots (src/CMakeLists.txt) against the rule of src/layers.txt: each layer's root holds
exactly the folders it may include, and the compiler, given a layer's root, finds a header the rule allows and does
not find one it forbids.

Usage: layer_roots_test.py BUILD_DIR CXX_COMPILER"""
import glob
import importlib.util
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.normpath(os.path.join(HERE, "..", "..", "src"))
INCLUDE = os.path.normpath(os.path.join(HERE, "..", "..", "include"))
spec = importlib.util.spec_from_file_location("check_layers", os.path.join(HERE, "..", "..", "scripts",
                                                                           "check-layers.py"))
check_layers = importlib.util.module_from_spec(spec)
spec.loader.exec_module(check_layers)

BUILD, CXX = sys.argv[1], sys.argv[2]
ROOTS = os.path.join(BUILD, "layer-roots")
LAYERS = [layer for layer in check_layers.ARROWS if layer != "braid"]


def preprocess(layer, header):
    with tempfile.NamedTemporaryFile("w", suffix=".cpp") as tu:
        tu.write(f'#include "{header}"\n')
        tu.flush()
        done = subprocess.run([CXX, "-std=c++20", "-E", "-o", os.devnull, "-I", os.path.join(ROOTS, layer),
                               "-I", INCLUDE, tu.name], capture_output=True, text=True)
    return done.returncode, done.stderr


def a_header_of(layer):
    found = sorted(glob.glob(os.path.join(SRC, layer, "**", "*.hpp"), recursive=True))
    return os.path.relpath(found[0], SRC) if found else None


class LayerRoots(unittest.TestCase):
    def test_each_root_holds_what_its_layer_reaches(self):
        for layer in LAYERS:
            with self.subTest(layer=layer):
                want = (check_layers.reach(layer) | {layer}) - {"braid"}
                self.assertEqual(set(os.listdir(os.path.join(ROOTS, layer))), want)
                for folder in want:
                    self.assertEqual(os.path.realpath(os.path.join(ROOTS, layer, folder)),
                                     os.path.realpath(os.path.join(SRC, folder)))

    def test_a_header_against_the_rule_is_not_found(self):
        for layer in LAYERS:
            for other in LAYERS:
                header = a_header_of(other)
                if other in check_layers.reach(layer) or other == layer or header is None:
                    continue
                with self.subTest(layer=layer, header=header):
                    code, err = preprocess(layer, header)
                    self.assertNotEqual(code, 0)
                    # GCC: "x.hpp: No such file or directory"; clang: "'x.hpp' file not found".
                    self.assertTrue(f"{header}: No such file" in err or f"'{header}' file not found" in err, err)

    def test_a_header_the_rule_allows_is_found(self):
        code, err = preprocess("transport", "base/deadline.hpp")
        self.assertEqual(code, 0, err)
        code, err = preprocess("core", "algorithms/collective.hpp")
        self.assertEqual(code, 0, err)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
