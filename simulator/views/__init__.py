"""Views: what a policy observes of a model's state (images, structured queues)."""
