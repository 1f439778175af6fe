"""Changefeed lifecycle: states, the metadata store, the owner loop that runs changefeeds."""
