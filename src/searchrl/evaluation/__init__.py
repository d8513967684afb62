"""searchrl.evaluation"""
