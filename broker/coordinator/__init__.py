"""Coordinators of the single-node broker: consumer groups, committed offsets, producer ids."""
