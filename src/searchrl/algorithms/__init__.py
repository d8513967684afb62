"""searchrl.algorithms"""
