"""One module per `arbiter` subcommand; each defines `register(subparsers)`."""
