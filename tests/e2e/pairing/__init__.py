"""The pairing service's e2e tests: a package, so that one running system serves all their modules.

pytest scopes a "package" fixture to a folder only when the folder has an __init__.py; without
one it would live for the whole session and its pairing service would act on later tests'
tournaments (it shares their database and consumer group).
"""
