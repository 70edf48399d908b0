#!/usr/bin/env python3
"""scripts/check-layers.py on small trees made here: an include down the rule passes, one up or across fails and is
named, a client reaching past the public API fails, and the real tree passes."""
import os
import subprocess
import sys
import tempfile
import unittest

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "check-layers.py")


def tree(files):
    root = tempfile.mkdtemp()
    for path, text in files.items():
        os.makedirs(os.path.dirname(os.path.join(root, path)), exist_ok=True)
        with open(os.path.join(root, path), "w") as f:
            f.write(text)
    return root


def check(root):
    done = subprocess.run([sys.executable, SCRIPT, "--root", root], capture_output=True, text=True)
    return done.returncode, done.stdout + done.stderr


class CheckLayers(unittest.TestCase):
    def test_includes_down_the_rule_pass(self):
        code, text = check(tree({
            "include/braid/types.hpp": "",
            "src/base/error.hpp": '#include "braid/types.hpp"\n',
            "src/transport/socket.hpp": '#include "base/error.hpp"\n',
            "src/core/create.cpp": '#include "transport/socket.hpp"\n#include <vector>\n',
            "tools/main.cpp": '#include "braid/types.hpp"\n#include "own/helper.hpp"\n',
            "tools/own/helper.hpp": "",
        }))
        self.assertEqual(code, 0, text)

    def test_an_include_up_the_rule_is_named(self):
        code, text = check(tree({
            "src/base/error.hpp": '#include "core/create.hpp"\n',
            "src/core/create.hpp": "",
        }))
        self.assertEqual(code, 1, text)
        self.assertIn("base includes core in 1 file(s)", text)
        self.assertIn("src/base/error.hpp", text)

    def test_an_include_across_is_named(self):
        code, text = check(tree({
            "src/topology/gpus.hpp": '#include "transport/socket.hpp"\n',
            "src/transport/socket.hpp": "",
        }))
        self.assertEqual(code, 1, text)
        self.assertIn("topology includes transport", text)

    def test_a_client_reaching_past_the_public_api_is_named(self):
        code, text = check(tree({
            "nccl/comm.cpp": '#include "base/error.hpp"\n',
            "src/base/error.hpp": "",
        }))
        self.assertEqual(code, 1, text)
        self.assertIn("nccl includes base", text)

    def test_a_client_reaches_another_clients_folder_only_where_the_check_allows(self):
        # The peers' drivers (bench/) share braid bench's options (tools/bench); nothing else of tools, and no other
        # client shares them.
        code, text = check(tree({
            "src/base/error.hpp": "",
            "tools/bench/options.hpp": "",
            "tools/run/launcher.hpp": "",
            "bench/driver.hpp": "",
            "bench/gloo_bench.cpp": '#include "bench/options.hpp"\n#include "bench/driver.hpp"\n',
            "bench/mpi_bench.cpp": '#include "run/launcher.hpp"\n',
            "nccl/calls.cpp": '#include "bench/options.hpp"\n',
        }))
        self.assertEqual(code, 1, text)
        self.assertIn("bench includes tools/run in 1 file(s), against the rule: bench/mpi_bench.cpp", text)
        self.assertIn("nccl includes tools/bench in 1 file(s)", text)
        self.assertNotIn("gloo_bench", text)

    def test_a_sealed_folder_is_for_the_layers_its_line_names(self):
        # src/layers.txt seals transport/tcp for bootstrap: algorithms may include transport, but not TCP's own files.
        code, text = check(tree({
            "src/transport/tcp/mesh.hpp": "",
            "src/transport/net.hpp": '#include "tcp/mesh.hpp"\n',
            "src/bootstrap/join.cpp": '#include "transport/tcp/mesh.hpp"\n',
            "src/algorithms/net.cpp": '#include "transport/net.hpp"\n#include "transport/tcp/mesh.hpp"\n',
        }))
        self.assertEqual(code, 1, text)
        self.assertIn("algorithms includes transport/tcp in 1 file(s)", text)
        self.assertNotIn("bootstrap includes", text)
        self.assertNotIn("transport includes", text)

    def test_a_folder_of_src_the_rule_does_not_name_is_refused(self):
        code, text = check(tree({"src/base/error.hpp": "", "src/rdma/verbs.hpp": '#include "base/error.hpp"\n'}))
        self.assertEqual(code, 1, text)
        self.assertIn("src/rdma is a folder of src/ but no layer of src/layers.txt", text)

    def test_the_tree_follows_the_rule(self):
        code, text = check(os.path.join(os.path.dirname(SCRIPT), ".."))
        self.assertEqual(code, 0, text)


if __name__ == "__main__":
    unittest.main()
