"""Charts as PNG files, drawn with matplotlib's Agg backend (no display needed).

`base` holds the house style every chart shares: a title, labelled axes with units and
currency, dates on the x axis. Each chart module draws one picture from plain rows.
"""
