#!/usr/bin/env python3
"""check_results.py's rule "unique bus id per host" (issue 54) on small hand-made results: two
ranks of one host on one GPU fail unless both recorded the share; other GPUs or hosts pass."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

CHECK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "check_results.py")


def results(*ranks):
    """A results document with no points and these (rank, host node, bus id, shared) ranks."""
    return {"schema": "tpbench.results", "schema_version": "1.0.0", "config": {}, "points": [],
            "context": {"ranks": [
                {"rank": r, "host": f"h{node}", "node": node,
                 "device_binding": {"device_index": r, "pci_bus_id": bus, "shared": shared}}
                for r, node, bus, shared in ranks]}}


class UniqueBusId(unittest.TestCase):
    def check(self, doc):
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "results.json"), "w") as f:
                json.dump(doc, f)
            p = subprocess.run([sys.executable, CHECK, d], capture_output=True, text=True, timeout=30)
        return p.returncode, p.stdout

    def test_same_gpu_on_one_host_fails(self):
        rc, out = self.check(results((0, 0, "0000:17:00.0", False), (1, 0, "0000:17:00.0", False)))
        self.assertEqual(rc, 1, out)
        self.assertIn("ranks 0, 1 on host h0 share GPU 0000:17:00.0", out)

    def test_spelling_of_the_bus_id_does_not_hide_a_share(self):
        rc, out = self.check(results((0, 0, "0000:AB:00.0", False), (1, 0, "0000:ab:00.0", False)))
        self.assertEqual(rc, 1, out)

    def test_different_gpus_pass(self):
        rc, out = self.check(results((0, 0, "0000:17:00.0", False), (1, 0, "0000:2a:00.0", False)))
        self.assertEqual(rc, 0, out)

    def test_same_bus_id_on_two_hosts_passes(self):
        rc, out = self.check(results((0, 0, "0000:17:00.0", False), (1, 1, "0000:17:00.0", False)))
        self.assertEqual(rc, 0, out)

    def test_a_recorded_share_passes_only_when_every_rank_says_so(self):
        both = results((0, 0, "0000:17:00.0", True), (1, 0, "0000:17:00.0", True))
        self.assertEqual(self.check(both)[0], 0)
        one = results((0, 0, "0000:17:00.0", True), (1, 0, "0000:17:00.0", False))
        self.assertEqual(self.check(one)[0], 1)

    def test_cpu_ranks_with_null_bus_ids_pass(self):
        rc, out = self.check(results((0, 0, None, False), (1, 0, None, False)))
        self.assertEqual(rc, 0, out)


if __name__ == "__main__":
    unittest.main(verbosity=2)
