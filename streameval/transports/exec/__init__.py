"""A process on stdin: keys answer its prompts, frames come from its files or stdout."""
