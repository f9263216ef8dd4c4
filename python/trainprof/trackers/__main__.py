"""python -m trainprof.trackers --log-to LIST --trainprof PROGRAM RUN_FILE:
logs a summarized run file into each tracker of LIST (what `record
--log-to` runs once the training ended). A tracker whose library is
missing, or that fails, is one warning line; the others go on. Exit status
0, or 2 for a bad command line."""

import argparse
import importlib
import sys
import tempfile

from trainprof.trackers import TRACKERS
from trainprof.trackers.log import gather


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m trainprof.trackers")
    parser.add_argument(
        "--log-to", required=True, help="mlflow, wandb, tensorboard, comma-separated"
    )
    parser.add_argument("--trainprof", default="trainprof", help="the trainprof program")
    parser.add_argument("--quiet", action="store_true", help="warnings only")
    parser.add_argument("run_file")
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.log_to.split(",") if n.strip()]
    unknown = [n for n in names if n not in TRACKERS]
    if unknown or not names:
        parser.error(
            f"--log-to: {', '.join(unknown) or 'nothing'}: not one of {', '.join(TRACKERS)}"
        )
    with tempfile.TemporaryDirectory(prefix="trainprof-trackers-") as work:
        try:
            figures = gather(args.trainprof, args.run_file, work)
        except Exception as e:  # noqa: BLE001 - one line: the training's results are not at stake
            print(f"trainprof: warning: --log-to: {e}", file=sys.stderr)
            return 0
        for name in names:
            try:
                module = importlib.import_module(f"trainprof.trackers.to_{name}")
                where = module.log(figures)
                if not args.quiet:
                    print(f"trainprof: logged to {where}", file=sys.stderr)
            except ImportError as e:
                print(
                    f"trainprof: warning: --log-to {name}: its library is not installed here "
                    f"({sys.executable}: {e}); nothing logged to it",
                    file=sys.stderr,
                )
            except Exception as e:  # noqa: BLE001 - one line each; the other trackers go on
                text = str(e).replace("\n", " ")[:300]
                print(
                    f"trainprof: warning: --log-to {name} failed ({type(e).__name__}: {text})",
                    file=sys.stderr,
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
