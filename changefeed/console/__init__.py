"""The web console of `changefeed server` (`GET /`): plain HTML + JavaScript under static/, with uPlot
vendored in static/vendor/ (no build step). The page only polls the server's HTTP API: the changefeed
routes the CLI uses, plus the two read-only routes in routes.py (the sink cluster's metadata and the
pipeline's metrics)."""
