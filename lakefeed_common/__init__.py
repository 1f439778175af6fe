"""Code shared by the three processes (broker, changefeed, spark-pipeline): logging setup."""
