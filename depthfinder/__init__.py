"""depthfinder: how deep your Transformer encoder should be, with evidence.

The floors, top down, each importing only those below it (tests/test_layering.py): cli, flows, tasks, tracking,
selection, encoder, expectations, evidence, runtime."""
