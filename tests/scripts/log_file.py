"""What the scripts' command-line tests share: a log file of given lines, removed when the test ends."""
import pathlib
import tempfile


def write_log(test, lines):
    """The path of a new temporary file holding `lines`, one per line; `test` (a unittest.TestCase)
    removes it when it ends."""
    log = tempfile.NamedTemporaryFile("w", suffix=".log", delete=False)
    test.addCleanup(pathlib.Path(log.name).unlink)
    log.write("\n".join(lines) + "\n")
    log.close()
    return log.name
