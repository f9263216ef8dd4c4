"""Adapters for frameworks that run their own loop (Lightning, Keras, Ignite,
skorch, Hugging Face's Trainer): each attached only once the script imports
its framework, from the framework's own callbacks or events."""
