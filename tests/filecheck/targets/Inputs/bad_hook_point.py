"""A target registering a hook at a hook point that does not exist (`optimisation`)."""

from lamina.backends.targets import Target, register_target

register_target(Target("typo", hooks={"optimisation": ["cse"]}))
