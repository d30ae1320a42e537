"""`python -m tpsdb` and the `tpsdb` command."""

import gc


def main() -> None:
    # Importing SQLAlchemy, SQLModel, pydantic and typer creates objects by the hundred thousand, none of them garbage;
    # with the collector off meanwhile, and those objects frozen out of its later passes, every command starts
    # ~0.08 s sooner.
    gc.disable()
    from .cli import main as run_cli

    gc.freeze()
    gc.enable()
    run_cli()


if __name__ == "__main__":
    main()
