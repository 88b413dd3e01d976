"""normfuse's version (a module of its own: the pipeline's cache key reads it without importing the
package root, which imports the pipeline)."""
__version__ = "0.1.0"
