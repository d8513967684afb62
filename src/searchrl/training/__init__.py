"""searchrl.training"""
