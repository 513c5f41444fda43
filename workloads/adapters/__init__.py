"""Adapters: real third-party lock libraries behind the lock-client protocol. An adapter
only translates; it never fixes the library's behaviour."""
