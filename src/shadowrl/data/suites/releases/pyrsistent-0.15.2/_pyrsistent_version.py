__version__ = '0.15.2'
