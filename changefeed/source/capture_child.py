"""Entry point of the capture's child process: `python -m changefeed.source.capture_child FD CHANGEFEED_ID`.

Started by `changefeed.source.capture_process.CaptureProcess`; reads its arguments (pickled) from stdin and
writes its events to the pipe FD. The changefeed id is on the command line only to name the process in `ps`.
A module of its own so the classes it sends are pickled under `capture_process`, not `__main__`.
"""

import sys

from changefeed.source.capture_process import run_child

if __name__ == "__main__":
    run_child(int(sys.argv[1]))
