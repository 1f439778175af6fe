"""Pure DataFrame -> DataFrame steps: parse, type per table, order per key, keep the latest."""
