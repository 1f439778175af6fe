"""Routing: which topic (expression) and which partition (strategy) each change goes to."""
