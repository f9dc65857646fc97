#!/usr/bin/env python3
"""Runs some of yocto-check-layer's own test cases on one layer, in a build directory that already lists the
layer and its dependencies (BUILDDIR), without the world-signature runs the full tool does before any test.

Usage: check-layer-subset.py POKY_DIR LAYER_DIR TEST_NAME...   (e.g. test_readme test_show_environment)
Prints the tool's per-test lines; exits 0 when every selected test passed.
"""
import logging
import os
import sys

poky, layer_dir, names = sys.argv[1], sys.argv[2], sys.argv[3:]
sys.path[0:0] = [os.path.join(poky, 'scripts', 'lib'), os.path.join(poky, 'meta', 'lib'),
                 os.path.join(poky, 'bitbake', 'lib')]

from checklayer import detect_layers  # noqa: E402
from checklayer.context import CheckLayerTestContext  # noqa: E402

logger = logging.getLogger('yocto-check-layer')
logger.addHandler(logging.StreamHandler(sys.stdout))
logger.setLevel(logging.INFO)

layers = detect_layers([layer_dir], True)
if len(layers) != 1:
    sys.exit('%s: expected one layer, found %d' % (layer_dir, len(layers)))
td = {'builddir': os.environ['BUILDDIR'], 'machines': None}
tc = CheckLayerTestContext(td=td, logger=logger, layer=layers[0], test_software_layer_signatures=True)
tc.loadTests([os.path.join(poky, 'scripts', 'lib', 'checklayer', 'cases')],
             tests=['common.CommonCheckLayer.%s' % n for n in names])
result = tc.runTests()
print('%s: %d run, %s' % (layers[0]['name'], result.testsRun, 'PASS' if result.wasSuccessful() else 'FAIL'))
sys.exit(0 if result.wasSuccessful() and result.testsRun == len(names) else 1)
